// Loading the application's modules takes a second or more. The signal handlers go in before them, so a
// SIGTERM in that time is held and honoured once the app exists (a clean stop, exit 0) instead of killing
// the process with the signal.
import { closeOnSignal } from '@app/common/close-on-signal';

const shutdown = closeOnSignal();
void import('./start-dialer').then(({ startDialer }) => startDialer(shutdown));
