// Bad input on the readiness, computer and organization endpoints (docs/interface.md §4.2, §4.4, §4.5); see
// support/fuzz-suite.ts.
import { FUZZ_GROUPS } from "./support/fuzz-groups.js";
import { defineFuzzSuite } from "./support/fuzz-suite.js";

defineFuzzSuite("fuzzing the readiness, computer and organization endpoints", FUZZ_GROUPS.v0);
