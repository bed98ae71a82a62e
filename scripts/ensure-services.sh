#!/usr/bin/env bash
# Starts the local PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379) when
# they do not answer (CI and fresh development machines of this project's kind
# have both installed, from Debian's packages). Says why when it cannot.
set -euo pipefail

wait_for() {
  local what=$1 check=$2
  for _ in $(seq 1 60); do
    if eval "$check" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  echo "ensure-services: $what did not come up within 30 s" >&2
  return 1
}

pg_up='pg_isready -h 127.0.0.1 -p 5432 -q'
if ! eval "$pg_up" >/dev/null 2>&1; then
  if ! command -v pg_ctlcluster >/dev/null || [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
    echo "ensure-services: PostgreSQL does not answer on 127.0.0.1:5432 and is not installed here (no pg_ctlcluster or cluster):" \
      "install it, point DATABASE_URL at one, or use docker compose up" >&2
    exit 1
  fi
  echo "ensure-services: starting PostgreSQL"
  # Its complaint (a cluster already running but not answering, a bad configuration) is kept for the failure below.
  started=$(pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start 2>&1) || true
  if ! wait_for PostgreSQL "$pg_up"; then
    [ -n "$started" ] && echo "ensure-services: pg_ctlcluster said: $started" >&2
    exit 1
  fi
fi

redis_up='redis-cli -h 127.0.0.1 -p 6379 ping | grep -q PONG'
if ! eval "$redis_up" >/dev/null 2>&1; then
  if ! command -v redis-server >/dev/null; then
    echo "ensure-services: Redis does not answer on 127.0.0.1:6379 and redis-server is not installed here:" \
      "install it, point REDIS_URL at one, or use docker compose up" >&2
    exit 1
  fi
  echo "ensure-services: starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  # "-::1": also IPv6 loopback where the machine has it (the leading "-" lets Redis 7 start without it).
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  if ! wait_for Redis "$redis_up"; then
    echo "ensure-services: the end of /var/log/redis/ci.log:" >&2
    tail -n 20 /var/log/redis/ci.log >&2 || true
    exit 1
  fi
fi
