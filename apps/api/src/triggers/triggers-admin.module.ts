import { Module } from '@nestjs/common';
import { TriggersAdminService } from './triggers-admin.service';
import { TriggersController } from './triggers.controller';

@Module({ controllers: [TriggersController], providers: [TriggersAdminService] })
export class TriggersAdminModule {}
