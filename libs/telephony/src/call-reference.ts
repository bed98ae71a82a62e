import { TelephonyConfiguration, WorkflowRun } from '@app/persistence';
import { CredentialsCipher } from './credentials-cipher';
import { CallReference } from './telephony-provider';

/** A run's call at its carrier, with the configuration's credentials decrypted (which throws when they no longer decrypt). */
export function callReferenceOf(
  run: Pick<WorkflowRun, 'id' | 'organizationId' | 'providerCallId'>,
  config: Pick<TelephonyConfiguration, 'credentialsEncrypted' | 'settings'>,
  cipher: CredentialsCipher,
): CallReference {
  return {
    runId: run.id,
    organizationId: run.organizationId,
    providerCallId: run.providerCallId,
    credentials: cipher.credentialsOf(config),
    settings: config.settings,
  };
}
