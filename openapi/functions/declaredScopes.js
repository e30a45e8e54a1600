// Checks an operation's `security` against our conventions: `[]` (public) or exactly one
// requirement object naming a declared scheme, with at least one scope (none only with
// `x-any-scope: true`), each declared in the root `x-scopes` map (the only place scopes are
// declared).
import { createRulesetFunction } from '@stoplight/spectral-core';

export default createRulesetFunction(
  { input: null, options: null },
  function declaredScopes(security, _opts, context) {
    const root = context.document.data;
    const resolved = context.documentInventory.resolved;
    const schemes = (resolved && resolved.components && resolved.components.securitySchemes) || {};
    const scopes = (root && root['x-scopes']) || {};
    const at = context.path;
    if (!Array.isArray(security)) {
      return [{ message: '`security` must be a list: [] or [{scheme: [scopes]}].', path: at }];
    }
    if (security.length === 0) return [];
    if (security.length !== 1) {
      return [{ message: 'Use exactly one security requirement object listing every required scope.', path: at }];
    }
    const req = security[0];
    const names = req && typeof req === 'object' ? Object.keys(req) : [];
    if (names.length !== 1) {
      return [{ message: 'The security requirement must name exactly one scheme.', path: [...at, 0] }];
    }
    const errors = [];
    const name = names[0];
    if (!Object.prototype.hasOwnProperty.call(schemes, name)) {
      errors.push({ message: `Security scheme "${name}" is not in components.securitySchemes.`, path: [...at, 0, name] });
    }
    const wanted = Array.isArray(req[name]) ? req[name] : [];
    // The operation object holding this security: an empty scope list is allowed only when it
    // says so with `x-any-scope: true` (any valid token, e.g. logout or the user's sessions).
    let op = resolved;
    for (const k of at.slice(0, -1)) op = op && op[k];
    const anyScope = op && op['x-any-scope'] === true;
    if (wanted.length === 0 && !anyScope) {
      errors.push({ message: 'A protected operation must require at least one scope (or say x-any-scope: true).', path: [...at, 0, name] });
    }
    if (wanted.length > 0 && anyScope) {
      errors.push({ message: 'x-any-scope: true with scopes listed.', path: [...at, 0, name] });
    }
    wanted.forEach((s, i) => {
      if (!Object.prototype.hasOwnProperty.call(scopes, s)) {
        errors.push({ message: `Scope "${s}" is not declared in the root x-scopes.`, path: [...at, 0, name, i] });
      }
    });
    return errors;
  },
);
