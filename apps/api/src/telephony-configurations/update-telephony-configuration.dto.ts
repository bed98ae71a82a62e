import { PartialType } from '@nestjs/swagger';
import { KeepAsSent } from '@app/common';
import { CreateTelephonyConfigurationDto } from './create-telephony-configuration.dto';

/**
 * Any subset of the creation fields; absent ones keep their value. `settings`
 * and `from_numbers` are replaced whole; `credentials: null` removes them.
 * `is_default_outbound: false` on the default leaves the organization without one.
 */
export class UpdateTelephonyConfigurationDto extends PartialType(CreateTelephonyConfigurationDto, {
  skipNullProperties: false,
}) {}

// PartialType copies the validation rules but not the KeepAsSent marks, which the pipe reads from this class.
for (const property of ['credentials', 'settings'] as const) KeepAsSent()(UpdateTelephonyConfigurationDto.prototype, property);
