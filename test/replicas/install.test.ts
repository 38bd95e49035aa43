/**
 * The install suite (test/integration/install.test.ts, every case) again with
 * two API processes and two worker processes behind a round-robin balancer:
 * the production topology must give the same results as one process.
 */
import { useTestReplicas } from '../support/replicas';
import '../integration/install.test';

useTestReplicas(2);
