#!/usr/bin/env bash
# Starts the local PostgreSQL and Redis when they do not answer (CI and fresh
# development machines of this project's kind have both installed).
set -euo pipefail

wait_for() {
  local what=$1 check=$2
  for _ in $(seq 1 60); do
    if eval "$check" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  echo "ensure-services: $what did not come up" >&2
  return 1
}

pg_up='pg_isready -h 127.0.0.1 -p 5432 -q'
if ! eval "$pg_up" >/dev/null 2>&1; then
  echo "ensure-services: starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  wait_for PostgreSQL "$pg_up"
fi

redis_up='redis-cli -h 127.0.0.1 -p 6379 ping | grep -q PONG'
if ! eval "$redis_up" >/dev/null 2>&1; then
  echo "ensure-services: starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_for Redis "$redis_up"
fi
