import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { CredentialsCipher } from './credentials-cipher';

/** How many of the most recently stored credentials are tried. */
const CHECKED = 20;

/**
 * Says at start, in the log, when this SECRETS_KEY reads none of the
 * carrier credentials stored most recently: the process then runs with a
 * key other than the one they were sealed with (under Compose, a stack
 * started with SECRETS_KEY exported and later without it takes the key the
 * `secrets` volume holds), and every dial and verify of those
 * configurations fails with `credentials_unreadable`. Only said, never a
 * refusal to start: the API is what stores credentials again after a key
 * that was meant to change. Credentials some of which are read are taken as
 * a key that is right (a damaged row is that row's own error). Not awaited
 * by the start, so a database slow to answer does not hold it.
 */
@Injectable()
export class StoredCredentialsCheck implements OnApplicationBootstrap {
  private readonly logger = new Logger(StoredCredentialsCheck.name);

  constructor(
    private readonly dataSource: DataSource,
    private readonly cipher: CredentialsCipher,
  ) {}

  onApplicationBootstrap(): void {
    this.check().catch((error: unknown) => this.logger.warn({ err: error }, 'could not check that SECRETS_KEY reads the stored carrier credentials'));
  }

  /** How many of the most recent credentials were tried, and how many this key read. */
  async check(): Promise<{ checked: number; readable: number }> {
    const rows: Array<{ credentials_encrypted: string }> = await this.dataSource.query(
      `SELECT credentials_encrypted FROM telephony_configurations WHERE credentials_encrypted IS NOT NULL ORDER BY updated_at DESC LIMIT $1`,
      [CHECKED],
    );
    const readable = rows.filter((row) => this.reads(row.credentials_encrypted)).length;
    if (rows.length > 0 && readable === 0) {
      this.logger.error(
        { checked: rows.length },
        'SECRETS_KEY reads none of the carrier credentials stored most recently: they were sealed under another key, and ' +
          "their configurations' dials fail until the key that sealed them is set again (with Compose: export SECRETS_KEY " +
          'as when they were stored) or they are stored again',
      );
    }
    return { checked: rows.length, readable };
  }

  private reads(envelope: string): boolean {
    try {
      this.cipher.decrypt(envelope);
      return true;
    } catch {
      return false;
    }
  }
}
