#!/usr/bin/env bash
# A throw-away PostgreSQL for the PostgreSQL store's tests: a cluster in a temp directory, on 127.0.0.1 and a free
# port only, stopped (and deleted) on exit.  It exports TOKENBOX_TEST_POSTGRES_DSN, which the tests read.
#
#   source tools/postgres_for_tests.sh                  # start it in this shell; stopped when the shell exits
#   tools/postgres_for_tests.sh .venv/bin/python -m pytest -q tests/core/session   # run a command against it
#
# Without initdb/pg_ctl (PATH, /usr/lib/postgresql/*/bin) it installs Debian's server package as root (apt-get).
# The server refuses to run as root: as root, the cluster belongs to the 'postgres' user (runuser).

tokenbox_pg_bin() {
    local found
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(command -v pg_ctl)"
        return 0
    fi
    found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    if [ -n "$found" ] && [ -x "$found/initdb" ]; then
        echo "$found"
        return 0
    fi
    return 1
}

tokenbox_pg_start() {
    local bin port as_user=()
    if ! bin=$(tokenbox_pg_bin); then
        if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
            echo "postgres_for_tests: no initdb/pg_ctl found; install PostgreSQL's server package" >&2
            return 1
        fi
        if [ ! -e /etc/postgresql-common/createcluster.conf ]; then  # no system cluster started on 5432
            mkdir -p /etc/postgresql-common && echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf
        fi
        apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null
        bin=$(tokenbox_pg_bin) || { echo "postgres_for_tests: postgresql installed but no initdb" >&2; return 1; }
    fi
    TOKENBOX_PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/tokenbox-pg.XXXXXX")
    if [ "$(id -u)" -eq 0 ]; then
        id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
        chown postgres "$TOKENBOX_PG_DIR"
        as_user=(runuser -u postgres --)
    fi
    TOKENBOX_PG_CTL=("${as_user[@]}" "$bin/pg_ctl")
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    cd / || return 1  # the server's user may not be allowed into the caller's directory
    "${as_user[@]}" "$bin/initdb" -D "$TOKENBOX_PG_DIR/data" -U tokenbox -A trust -E UTF8 --locale=C.UTF-8 \
        >"$TOKENBOX_PG_DIR/initdb.log" 2>&1 || { cat "$TOKENBOX_PG_DIR/initdb.log" >&2; cd - >/dev/null; return 1; }
    "${as_user[@]}" "$bin/pg_ctl" -D "$TOKENBOX_PG_DIR/data" -l "$TOKENBOX_PG_DIR/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $TOKENBOX_PG_DIR -c max_connections=100" start >/dev/null \
        || { cat "$TOKENBOX_PG_DIR/server.log" >&2; cd - >/dev/null; return 1; }
    cd - >/dev/null || return 1
    export TOKENBOX_TEST_POSTGRES_DSN="postgresql://tokenbox@127.0.0.1:$port/postgres"
    echo "postgres_for_tests: PostgreSQL ($("$bin/pg_ctl" --version)) at $TOKENBOX_TEST_POSTGRES_DSN" >&2
}

tokenbox_pg_stop() {
    if [ -n "${TOKENBOX_PG_DIR:-}" ] && [ -d "$TOKENBOX_PG_DIR" ]; then
        "${TOKENBOX_PG_CTL[@]}" -D "$TOKENBOX_PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
        rm -rf "$TOKENBOX_PG_DIR"
    fi
    unset TOKENBOX_PG_DIR TOKENBOX_TEST_POSTGRES_DSN
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then  # sourced: start here, stop when the sourcing shell exits
    if tokenbox_pg_start; then
        trap tokenbox_pg_stop EXIT
    else
        tokenbox_pg_stop
        return 1
    fi
else  # run: start, run the command given (if any), stop
    set -euo pipefail
    trap tokenbox_pg_stop EXIT
    tokenbox_pg_start
    if [ "$#" -gt 0 ]; then
        "$@"
    else
        echo "postgres_for_tests: started and stopped; give a command to run against it, or source this file" >&2
    fi
fi
