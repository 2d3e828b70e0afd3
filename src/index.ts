/**
 * Library entry point: the gateway's building blocks for embedding and for upstream services.
 */
export { startGateway, type GatewayHandle, type StartOptions } from './server.js';
export { loadConfig, validateConfig } from './config/load.js';
export { configSchema, type GatewayConfig, type ConfigInput } from './config/schema.js';
export { generateApiKey, hashApiKey, parseApiKey } from './auth/api-key.js';
export { ERRORS, GatewayError, type ErrorCode } from './errors.js';
export type { KeyStore, Company, KeyRecord } from './store/types.js';
export { MemoryKeyStore } from './store/memory-store.js';
export { FileKeyStore } from './store/file-store.js';
export { RedisKeyStore } from './store/redis-store.js';
export { createExampleBackend } from './demo/backend.js';
export {
  signGatewayRequest,
  verifyGatewaySignature,
  gatewaySignatureMiddleware,
  type SignatureCheck,
} from './signing.js';
