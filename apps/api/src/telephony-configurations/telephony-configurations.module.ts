import { Module } from '@nestjs/common';
import { TelephonyModule } from '@app/telephony';
import { TelephonyConfigurationsController } from './telephony-configurations.controller';
import { TelephonyConfigurationsService } from './telephony-configurations.service';

@Module({
  imports: [TelephonyModule],
  controllers: [TelephonyConfigurationsController],
  providers: [TelephonyConfigurationsService],
})
export class TelephonyConfigurationsModule {}
