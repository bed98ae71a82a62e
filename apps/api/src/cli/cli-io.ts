/**
 * Where a command writes. `out` is the command's result (what scripts parse);
 * `err` is for people: progress, hints and errors.
 */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}
