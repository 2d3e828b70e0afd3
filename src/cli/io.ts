import { maskUrlsInText } from '../redact.js';

/** Exit status of the `notify-gateway` command (DESIGN.md). */
export const EXIT_OK = 0;
/** A runtime failure: an operation refused or failed, a store that cannot be reached. */
export const EXIT_FAIL = 1;
/** Bad usage (unknown command or option, bad argument) or invalid input or configuration. */
export const EXIT_USAGE = 2;

/**
 * What the CLI takes from its process, so that commands run in a test as they run from a shell.
 * `src/cli.ts` passes the real process; a test passes strings it collects and an emitter.
 */
export interface CliIo {
  /** Standard output: what a script parses (tables, `--json`). */
  stdout(text: string): void;
  /** Standard error: failures and notes for the reader. */
  stderr(text: string): void;
  /** The environment (`GATEWAY_CONFIG`, `REDIS_URL`, `PORT`...). */
  env: Readonly<Record<string, string | undefined>>;
  /** Standard input (`keys hash`, the answer to a question). */
  stdin: AsyncIterable<Buffer | string>;
  /**
   * Standard input and standard error are terminals: a person is there to answer a question
   * (`apply --prune` asks before it runs). Absent = no.
   */
  interactive?: boolean;
  /** Where `serve` and `demo` hear SIGTERM and SIGINT. */
  signals: {
    on(signal: 'SIGTERM' | 'SIGINT', listener: () => void): unknown;
    once(signal: 'SIGTERM' | 'SIGINT', listener: () => void): unknown;
  };
  /**
   * Ends the process: only for what outlives `runCli` (a long-running command stopped by a signal,
   * a server that fails after it started). Everything else returns its exit code from `runCli`.
   */
  exit(code: number): void;
}

/** What every command gets: the process (`io`) and the global options. */
export interface CliContext {
  io: CliIo;
  /** `--config FILE`, wherever it was given on the command line. */
  configFile(): string | undefined;
  /** `--admin-url URL`: the management commands go through this admin API. */
  adminUrl?(): string | undefined;
  /** `--token-file FILE`: the admin API token, read from a file (never from the command line). */
  tokenFile?(): string | undefined;
}

/**
 * Stops the command with an exit code and a message for stderr (`runCli` writes it, masked). Thrown
 * by `fail`; anything else thrown is a runtime failure (exit 1).
 */
export class CliExit extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = 'CliExit';
  }
}

/**
 * Stops the command: `runCli` prints `notify-gateway: <message>` on stderr and returns `exitCode`.
 *
 * @example
 * if (!ENVIRONMENT_PATTERN.test(o.environment)) fail('--environment must be ...', EXIT_USAGE);
 */
export function fail(message: string, exitCode: number = EXIT_FAIL): never {
  throw new CliExit(message, exitCode);
}

/**
 * The line a failure prints. Every message goes through the URL mask: errors from below (ioredis,
 * the config loader) quote URLs, which may carry a password.
 */
export function failureLine(message: string): string {
  return `notify-gateway: ${maskUrlsInText(message)}\n`;
}

/** Prints a failure and ends the process: for failures after `runCli` has returned (servers). */
export function exitWith(io: CliIo, message: string, exitCode: number = EXIT_FAIL): void {
  io.stderr(failureLine(message));
  io.exit(exitCode);
}
