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
module.exports = { APP_NODE_FLAGS: ['--max-old-space-size=1024'] };
