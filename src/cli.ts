#!/usr/bin/env node
import { runCli } from './cli/main.js';

// The `notify-gateway` bin and the CLI's composition root: the one place that hands the process
// (its streams, environment, signals and exit) to the commands in `cli/`.
const code = await runCli(process.argv.slice(2), {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  env: process.env,
  stdin: process.stdin,
  interactive: Boolean(process.stdin.isTTY && process.stderr.isTTY),
  signals: process,
  exit: (c) => process.exit(c),
});
// A failure ends the process at once (an open Redis connection must not keep it alive); success
// lets it end by itself, after `serve` or `demo` if one is running.
if (code !== 0) process.exit(code);
