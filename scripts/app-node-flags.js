'use strict';
// Node flags the API and the dialer run with (npm start and the bench; the
// Dockerfile, docker-compose.yml and the start:api / start:dialer scripts
// spell the same).
//
// The heap limit also sets how far V8 lets the old generation grow between
// full collections: with the default limit of a large machine (about 4 GiB
// here) a gateway whose live heap is ~70 MiB grew to ~200 MiB of old space
// under load before collecting (peak RSS ~300 MiB); with 1 GiB it collects
// near 75 MiB (peak RSS ~190 MiB) at the same CPU per request. 1 GiB still
// leaves room for bursts of large bodies many times over.
//
// The dialer's young generation has semi-spaces of 32 MiB instead of V8's 16:
// a call's short-lived objects get twice as long to die before a scavenge has
// to copy them (0.49-0.51 ms of dialer CPU a call against 0.53-0.57), for
// about 35 MiB more RSS. The API keeps V8's 16: two alternating pairs of
// trigger, reads, run list and trigger -> dial (docs/performance.md, "What
// changed") put its peak RSS at 212 and 214 MiB against 266 and 268 with 32,
// its CPU per trigger no higher, and the run list's about 15 % higher.
const HEAP_LIMIT = '--max-old-space-size=1024';
module.exports = {
  API_NODE_FLAGS: [HEAP_LIMIT],
  DIALER_NODE_FLAGS: [HEAP_LIMIT, '--max-semi-space-size=32'],
};
