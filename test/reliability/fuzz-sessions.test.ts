// Bad input on the session endpoints (docs/interface.md §4.3); see support/fuzz-suite.ts.
import { FUZZ_GROUPS } from "./support/fuzz-groups.js";
import { defineFuzzSuite } from "./support/fuzz-suite.js";

defineFuzzSuite("fuzzing the session endpoints", FUZZ_GROUPS.sessions);
