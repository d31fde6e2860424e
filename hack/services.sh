#!/usr/bin/env bash
# Makes sure the local services that the tests and the demo use are
# installed and running: PostgreSQL 15 on 127.0.0.1:5432 (trust auth, user
# postgres), MariaDB on 127.0.0.1:3306 (root, empty password) and the kcat
# client. Installs missing pieces from Debian's packages. Idempotent.
set -euo pipefail

log() { echo "services: $*" >&2; }

missing=()
ls /etc/postgresql/*/main >/dev/null 2>&1 || missing+=(postgresql)
[ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server)
command -v mariadb >/dev/null 2>&1 || missing+=(mariadb-client)
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]} from Debian's packages"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

wait_for() { # description command...
  local what=$1; shift
  for _ in $(seq 1 60); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  log "$what did not come up"; return 1
}

# PostgreSQL
pg_version=$(ls /etc/postgresql | sort -V | tail -n 1)
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  log "starting PostgreSQL $pg_version"
  pg_ctlcluster --skip-systemctl-redirect "$pg_version" main start
  wait_for PostgreSQL pg_isready -q -h 127.0.0.1 -p 5432
fi
if ! psql -h 127.0.0.1 -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1; then
  # A fresh Debian install asks for passwords on TCP; the tests use trust
  # on loopback, as the machines of this project are set up.
  hba=/etc/postgresql/$pg_version/main/pg_hba.conf
  log "allowing trust auth on loopback in $hba"
  sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
  pg_ctlcluster --skip-systemctl-redirect "$pg_version" main reload
  wait_for "PostgreSQL login" psql -h 127.0.0.1 -U postgres -d postgres -Atqc 'select 1'
fi

# MariaDB
if ! mariadb -h 127.0.0.1 -u root -e 'select 1' >/dev/null 2>&1; then
  if ! mariadb-admin --protocol=socket -u root ping >/dev/null 2>&1; then
    log "starting MariaDB"
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
    wait_for MariaDB mariadb-admin --protocol=socket -u root ping
  fi
  if ! mariadb -h 127.0.0.1 -u root -e 'select 1' >/dev/null 2>&1; then
    # A fresh install lets root in only through the socket.
    log "allowing root with an empty password on loopback"
    mariadb --protocol=socket -u root -e \
      "ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD(''); FLUSH PRIVILEGES;"
    wait_for "MariaDB login" mariadb -h 127.0.0.1 -u root -e 'select 1'
  fi
fi

log "PostgreSQL $(psql -h 127.0.0.1 -U postgres -Atqc 'show server_version'), MariaDB $(mariadb -h 127.0.0.1 -u root -N -e 'select version()'), $(kcat -V 2>&1 | head -n 1)"
