import { Module } from '@nestjs/common';
import { TelephonyModule } from '@app/telephony';
import { TelephonyWebhooksController } from './telephony-webhooks.controller';
import { TelephonyWebhooksService } from './telephony-webhooks.service';

@Module({
  imports: [TelephonyModule],
  controllers: [TelephonyWebhooksController],
  providers: [TelephonyWebhooksService],
})
export class TelephonyWebhooksModule {}
