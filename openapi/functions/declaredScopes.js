// Checks an operation's `security` against our conventions: `[]` (public) or one requirement
// object naming the bearer scheme, with at least one scope (none only with `x-any-scope: true`),
// each declared in the root `x-scopes` map (the only place scopes are declared). The served
// document (codegen/served.py) adds a second requirement, the oauth2 alternative, on the
// operations an OAuth application's token may call; it must name the oauth2 scheme and list
// the very same scopes, never on an `x-first-party` operation nor with a scope the oauth2
// scheme withholds (`x-withheld-scopes`). The sources may write that pair too.
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
    // The operation object holding this security.
    let op = resolved;
    for (const k of at.slice(0, -1)) op = op && op[k];
    const errors = [];
    if (security.length === 2) {
      const alt = security[1];
      const altNames = alt && typeof alt === 'object' ? Object.keys(alt) : [];
      const scheme = altNames.length === 1 ? schemes[altNames[0]] : undefined;
      if (!scheme || scheme.type !== 'oauth2') {
        return [{ message: 'A second security requirement must name the oauth2 scheme alone.', path: [...at, 1] }];
      }
      const first = security[0] && typeof security[0] === 'object' ? Object.values(security[0]) : [];
      const same = first.length === 1 && JSON.stringify(first[0]) === JSON.stringify(alt[altNames[0]]);
      if (!same) {
        errors.push({ message: 'The oauth2 alternative must list the same scopes as the bearer requirement.', path: [...at, 1, altNames[0]] });
      }
      if (op && op['x-first-party'] === true) {
        errors.push({ message: 'An x-first-party operation refuses application tokens: no oauth2 alternative.', path: [...at, 1] });
      }
      const withheld = Array.isArray(scheme['x-withheld-scopes']) ? scheme['x-withheld-scopes'] : [];
      (alt[altNames[0]] || []).filter((s) => withheld.includes(s)).forEach((s) => {
        errors.push({ message: `Scope "${s}" is never granted to an application: no oauth2 alternative.`, path: [...at, 1, altNames[0]] });
      });
    } else if (security.length !== 1) {
      return [{ message: 'Use one security requirement object listing every required scope (and at most the oauth2 alternative).', path: at }];
    }
    const req = security[0];
    const names = req && typeof req === 'object' ? Object.keys(req) : [];
    if (names.length !== 1) {
      return [{ message: 'The security requirement must name exactly one scheme.', path: [...at, 0] }];
    }
    const name = names[0];
    if (!Object.prototype.hasOwnProperty.call(schemes, name)) {
      errors.push({ message: `Security scheme "${name}" is not in components.securitySchemes.`, path: [...at, 0, name] });
    } else if (schemes[name].type !== 'http' || String(schemes[name].scheme).toLowerCase() !== 'bearer') {
      errors.push({ message: `The first security requirement names the http bearer scheme, not "${name}".`, path: [...at, 0, name] });
    }
    const wanted = Array.isArray(req[name]) ? req[name] : [];
    // An empty scope list is allowed only when the operation says so with `x-any-scope: true`
    // (any valid token, e.g. logout or the user's sessions).
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
