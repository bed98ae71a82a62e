'use strict';
// Preloaded (`node --require`) by tests: prints a line on stderr when the process
// adds its first SIGTERM listener, and whether Nest was loaded by then, so a test
// can signal it right after that.
const on = process.on;
let reported = false;
process.on = function (event, listener) {
  const result = on.call(this, event, listener);
  if (event === 'SIGTERM' && !reported) {
    reported = true;
    const nestLoaded = Object.keys(require.cache).some((path) => path.includes('/node_modules/@nestjs/core/'));
    process.stderr.write(`test: SIGTERM listener added, Nest loaded: ${nestLoaded}\n`);
  }
  return result;
};
