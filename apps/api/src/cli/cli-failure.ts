/** An expected failure (database down, schema missing): the CLI prints the message and exits 1, no stack. */
export class CliFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CliFailure';
  }
}
