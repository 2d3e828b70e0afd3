import { randomUUID } from 'node:crypto';
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import { isoSeconds } from '../time.js';

export interface ExampleBackendOptions {
  /** Name of the trusted company header the gateway sets (lowercase). */
  companyHeader?: string;
  /** Optional guard run first (e.g. the gateway signature middleware). */
  guard?: RequestHandler;
}

/**
 * The example notification backend of the demo and the tests: the two endpoints the spec shows,
 * under `/notify/v1`. It trusts the company header set by the gateway and refuses requests without it.
 */
export function createExampleBackend(opts: ExampleBackendOptions = {}): Express {
  const companyHeader = opts.companyHeader ?? 'x-company-id';
  const app = express();
  app.disable('x-powered-by');
  if (opts.guard) app.use(opts.guard);
  app.use((req, res, next) => {
    if (typeof req.headers[companyHeader] !== 'string') {
      return void res
        .status(401)
        .json({ error: 'Unauthorized', details: 'Request did not come through the gateway' });
    }
    next();
  });
  app.get('/notify/v1/health', (req, res) => {
    res.json({ status: 'ok', company_id: req.headers[companyHeader], time: isoSeconds() });
  });
  app.post('/notify/v1/otps', express.json({ limit: '16kb', type: () => true }), (req, res) => {
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) {
      return void res
        .status(415)
        .json({ error: 'Unsupported Media Type', details: 'Content-Type must be application/json' });
    }
    const body = (req.body ?? {}) as Record<string, unknown>;
    const problem =
      typeof body.identifier !== 'string' || body.identifier.trim() === ''
        ? 'identifier is required and must be a non-empty string'
        : body.identifier_type === undefined
          ? 'identifier_type is required'
          : body.identifier_type !== 'email'
            ? 'identifier_type must be "email"'
            : !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(body.identifier)
              ? 'identifier must be an e-mail address when identifier_type is "email"'
              : null;
    if (problem) return void res.status(400).json({ error: 'Bad Request', details: problem });
    const now = Date.now();
    res.status(201).json({
      id: `otp_${randomUUID()}`,
      identifier: body.identifier,
      identifier_type: 'email',
      company_id: req.headers[companyHeader],
      status: 'sent',
      created_at: isoSeconds(now),
      expires_at: isoSeconds(now + 10 * 60_000),
    });
  });
  app.use((_req, res) => {
    res.status(404).json({ error: 'Not Found', details: 'No such endpoint' });
  });
  const onError: ErrorRequestHandler = (err, _req, res, _next) => {
    const status = typeof err?.status === 'number' && err.status < 500 ? err.status : 500;
    res.status(status).json({
      error: status === 400 ? 'Bad Request' : 'Error',
      details: status === 400 ? 'Body is not valid JSON' : 'Unexpected error',
    });
  };
  app.use(onError);
  return app;
}
