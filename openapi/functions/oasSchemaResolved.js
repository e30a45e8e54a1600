// Spectral's own OpenAPI structure check (the function behind oas3-schema), re-exported so
// .spectral.yaml can run it on the resolved document: see the oas3-schema note there.
import { oas } from '@stoplight/spectral-rulesets';

export default oas.rules['oas3-schema'].then.function;
