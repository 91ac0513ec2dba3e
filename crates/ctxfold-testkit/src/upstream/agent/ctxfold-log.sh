#!/usr/bin/env bash
# ctxfold-log.sh K: what a service logs during build step K, about 29 KB of
# timestamped INFO and DEBUG lines (the steps 5, 15, 25, … over 30 KB) with
# exactly one ERROR line, which names the step. The same K prints the same
# log.
set -eu
k=$1
size=29000
err=$(( 110 + (k * 37) % 170 ))
if (( k % 10 == 5 )); then
  size=42000
  err=9
fi
seed=$(( (k * 2654435761 + 97) % 2147483648 ))
ms=$(( (8 * 3600 + k * 97) * 1000 ))
workers=(http-0 http-1 http-2 http-3 sched ingest-0 ingest-1 cache)
routes=(/api/v1/items /api/v1/items/search /api/v1/users /api/v1/orders /healthz /api/v1/artifacts)
tables=(items users orders artifacts sessions)
n=0
i=0
while (( n < size )); do
  seed=$(( (seed * 1103515245 + 12345) % 2147483648 ))
  r=$(( seed >> 7 ))
  ms=$(( ms + 20 + r % 400 ))
  printf -v ts '2026-12-03T%02d:%02d:%02d.%03dZ' $(( ms / 3600000 % 24 )) $(( ms / 60000 % 60 )) $(( ms / 1000 % 60 )) $(( ms % 1000 ))
  w=${workers[r % 8]}
  printf -v rid %08x $(( r * 2654435761 % 4294967296 ))
  if (( i == err )); then
    line="$ts ERROR [uploader] step $k: upload of artifact shard-$k-$(( r % 9000 + 1000 )).tar.zst failed: connection reset by peer after $(( r % 90000 + 4096 )) bytes (attempt 3/3)"
  else
    case $(( r / 8 % 7 )) in
      0|1) line="$ts INFO  [$w] ${routes[r / 56 % 6]}/$(( r % 100000 )) 200 in $(( r / 3 % 480 + 2 )) ms req_id=$rid" ;;
      2) line="$ts DEBUG [$w] db query on ${tables[r / 56 % 5]} returned $(( r % 240 )) rows in $(( r / 5 % 90 + 1 )) ms" ;;
      3) line="$ts DEBUG [$w] cache lookup key=${tables[r / 56 % 5]}:$(( r % 50000 )) hit=$(( r % 2 )) age_ms=$(( r / 7 % 60000 ))" ;;
      4) line="$ts INFO  [$w] step $k: compiled module m$(( r % 900 )) ($(( r / 9 % 4000 + 100 )) lines) in $(( r / 11 % 900 + 10 )) ms" ;;
      5) line="$ts DEBUG [$w] pool stats: active=$(( r % 32 )) idle=$(( r / 3 % 16 )) waiting=0 total=$(( r % 32 + r / 3 % 16 ))" ;;
      *) line="$ts INFO  [$w] heartbeat from node-$(( r % 12 )) latency_ms=$(( r / 13 % 40 + 1 )) queue_depth=$(( r / 17 % 64 ))" ;;
    esac
  fi
  printf '%s\n' "$line"
  n=$(( n + ${#line} + 1 ))
  i=$(( i + 1 ))
done
