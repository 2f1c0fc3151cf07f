// The pretest step: build `minibus serve` for the tests (skipped when
// MINIBUS_BIN names one already built, as .ci/run does).
import { build } from "./lib/minibus.mjs";

if (!process.env.MINIBUS_BIN) build();
