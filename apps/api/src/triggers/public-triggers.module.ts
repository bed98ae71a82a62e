import { Module } from '@nestjs/common';
import { PublicTriggerController } from './public-trigger.controller';
import { TriggerCallService } from './trigger-call.service';

@Module({ controllers: [PublicTriggerController], providers: [TriggerCallService] })
export class PublicTriggersModule {}
