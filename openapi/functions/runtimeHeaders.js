// Every response must document the headers the runtime sets on all of them: X-Request-ID and
// the rate-limit headers (openapi/README.md; 429 responses also carry Retry-After).
import { createRulesetFunction } from '@stoplight/spectral-core';

const EVERY = ['X-Request-ID', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset',
  'RateLimit-Policy', 'RateLimit'];

export default createRulesetFunction(
  { input: null, options: null },
  function runtimeHeaders(response, _opts, context) {
    if (!response || typeof response !== 'object') return [];
    const headers = response.headers || {};
    const status = String(context.path[context.path.length - 1]);
    const want = status === '429' ? [...EVERY, 'Retry-After'] : EVERY;
    return want
      .filter((h) => !Object.prototype.hasOwnProperty.call(headers, h))
      .map((h) => ({ message: `Response ${status} does not document the ${h} header.`, path: context.path }));
  },
);
