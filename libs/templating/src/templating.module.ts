import { Module } from '@nestjs/common';
import { PromptRenderer } from './prompt-renderer';

@Module({ providers: [PromptRenderer], exports: [PromptRenderer] })
export class TemplatingModule {}
