import { readAnswerUrlCarrierSettings } from './answer-url-carrier-settings';
import { readCallControlCarrierSettings } from './call-control-carrier-settings';
import { hangsUpOnMachines } from './machine-action';

describe('hangsUpOnMachines', () => {
  it.each([
    [{ answering_machine_detection: true, machine_action: 'hangup' }, true],
    // What the API takes and every carrier's dial reads as a hang-up.
    [{ answering_machine_detection: true }, true],
    [{ answering_machine_detection: true, machine_action: 'talk' }, false],
    // No detection, no verdict: nothing to hang up on.
    [{ machine_action: 'hangup' }, false],
    [{}, false],
  ])('decides %j as the carriers read it: %s', (settings, hangsUp) => {
    expect(hangsUpOnMachines(settings)).toBe(hangsUp);
    for (const read of [readAnswerUrlCarrierSettings(settings), readCallControlCarrierSettings(settings)]) {
      expect(read.answeringMachineDetection && read.machineAction === 'hangup').toBe(hangsUp);
    }
  });
});
