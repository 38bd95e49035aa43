// Every workflow the worker registers; the bundler starts from this file.
export { selfCheckWorkflow } from './self-check';
export { hostMonitorWorkflow } from './host-monitor';
export { installClusterWorkflow } from './install-cluster';
export { enrollBmcHostWorkflow } from './enroll-bmc-host';
export { installDay2HostWorkflow } from './install-day2-host';
