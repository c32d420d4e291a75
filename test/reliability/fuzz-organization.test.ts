// Bad input on the credit-limit reads and the webhook endpoints (issue 20); see
// support/fuzz-suite.ts.
import { FUZZ_GROUPS } from "./support/fuzz-groups.js";
import { defineFuzzSuite } from "./support/fuzz-suite.js";

defineFuzzSuite("fuzzing the credit-limit and webhook endpoints", FUZZ_GROUPS.organization);
