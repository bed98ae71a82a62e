import { Global, Module } from '@nestjs/common';
import { ApiKeyAuthenticator } from './api-key-authenticator.service';
import { ApiKeyGuard } from './api-key.guard';

@Global()
@Module({ providers: [ApiKeyAuthenticator, ApiKeyGuard], exports: [ApiKeyAuthenticator, ApiKeyGuard] })
export class AuthModule {}
