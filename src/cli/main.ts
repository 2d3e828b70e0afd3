import { Command, CommanderError } from 'commander';
import { registerApplyCommands } from './apply.js';
import { registerAuditCommand } from './audit.js';
import { registerCompanyCommands } from './companies.js';
import { registerConfigCommands } from './config.js';
import { registerDemoCommands } from './demo.js';
import { CliExit, EXIT_FAIL, EXIT_OK, EXIT_USAGE, failureLine, type CliContext, type CliIo } from './io.js';
import { registerKeyCommands } from './keys.js';
import { registerServeCommand } from './serve.js';
import { registerUsageCommand } from './usage.js';

// Each command module declares its commands here and loads what it runs only when it runs
// (dynamic `import()` in the action): `--help` and a management command never load express,
// OpenTelemetry or prom-client.

/**
 * The `notify-gateway` command tree, writing through `io`. Parsing errors and help throw (commander's
 * `exitOverride`) instead of ending the process; `runCli` turns them into exit codes.
 *
 * @example
 * const program = buildProgram(io);
 * await program.parseAsync(['keys', 'list', 'acme'], { from: 'user' });
 */
export function buildProgram(io: CliIo): Command {
  const program = new Command()
    .name('notify-gateway')
    .description('API-key gateway for notification backends')
    .configureOutput({ writeOut: (s) => io.stdout(s), writeErr: (s) => io.stderr(s) })
    .showHelpAfterError()
    // Set before the subcommands are added: they inherit the output and the override.
    .exitOverride()
    .option(
      '-c, --config <file>',
      'config file (default: $GATEWAY_CONFIG or the shipped config/default.yaml)',
    )
    .option(
      '--admin-url <url>',
      "manage through this gateway's admin API, as its token (default: $ADMIN_URL; none: the store itself, as root)",
    )
    .option('--token-file <file>', 'the admin API token, read from this file (default: $ADMIN_TOKEN)');
  const globals = () => program.opts<{ config?: string; adminUrl?: string; tokenFile?: string }>();
  const ctx: CliContext = {
    io,
    configFile: () => globals().config,
    adminUrl: () => globals().adminUrl,
    tokenFile: () => globals().tokenFile,
  };
  registerServeCommand(program, ctx);
  registerDemoCommands(program, ctx);
  registerConfigCommands(program, ctx);
  registerCompanyCommands(program, ctx);
  registerKeyCommands(program, ctx);
  registerAuditCommand(program, ctx);
  registerUsageCommand(program, ctx);
  registerApplyCommands(program, ctx);
  return program;
}

/**
 * Runs one command line (`argv` without node and the script) and resolves with its exit status:
 * 0 success, 1 runtime failure, 2 bad usage or invalid input or config. Failures are printed on
 * `io.stderr` as `notify-gateway: <message>`, URLs masked. A long-running command (`serve`, `demo`)
 * resolves once it runs, and ends the process later through `io.exit`.
 *
 * @example
 * const code = await runCli(['companies', 'list', '--json'], io);
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    await buildProgram(io).parseAsync([...argv], { from: 'user' });
    return EXIT_OK;
  } catch (err) {
    return exitCodeOf(err, io);
  }
}

function exitCodeOf(err: unknown, io: CliIo): number {
  // Commander has already printed its message (and the help after a usage error). It exits 1 on a
  // usage error; the documented code is 2. Help exits 0.
  if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
  if (err instanceof CliExit) {
    io.stderr(failureLine(err.message));
    return err.exitCode;
  }
  io.stderr(failureLine(err instanceof Error ? err.message : String(err)));
  return EXIT_FAIL;
}
