/** A command line that cannot be run as given; the CLI prints the message and exits 2. */
export class CliUsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CliUsageError';
  }
}
