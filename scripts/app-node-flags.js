'use strict';
// Node flags the API and the dialer run with (npm start and the bench; the
// Dockerfile and the start:api / start:dialer scripts spell the same).
//
// The heap limit also sets how far V8 lets the old generation grow between
// full collections: with the default limit of a large machine (about 4 GiB
// here) a gateway whose live heap is ~70 MiB grew to ~200 MiB of old space
// under load before collecting (peak RSS ~300 MiB); with 1 GiB it collects
// near 75 MiB (peak RSS ~190 MiB) at the same CPU per request. 1 GiB still
// leaves room for bursts of large bodies many times over.
//
// The young generation's semi-spaces are 32 MiB instead of V8's 16: short-lived
// objects (a request's, a call's) get twice as long to die before a scavenge
// has to copy them, for about 35 MiB more RSS. Alternating runs of
// trigger-alone and the dialer (README, "What changed"): API CPU per trigger
// 166 and 169 µs against 177 to 203 µs; 64 MiB saved little more and cost
// about 90 MiB of RSS.
module.exports = { APP_NODE_FLAGS: ['--max-old-space-size=1024', '--max-semi-space-size=32'] };
