/** The download limits the CLI runs with when no flag is given: every cap named by its flag, as users read it. */
import { defaultAppConfig } from '../../src/core/flags/app-config';
import { downloadLimitsOf } from '../../src/wiring';

export const cliDownloadLimits = downloadLimitsOf(defaultAppConfig);
