// Bad input on the analytics endpoints (docs/interface.md §4.1); see support/fuzz-suite.ts.
import { FUZZ_GROUPS } from "./support/fuzz-groups.js";
import { defineFuzzSuite } from "./support/fuzz-suite.js";

defineFuzzSuite("fuzzing the analytics endpoints", FUZZ_GROUPS.analytics);
