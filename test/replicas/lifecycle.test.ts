/**
 * Discovery and validation (test/integration/lifecycle.test.ts, every case)
 * again with two API processes behind a round-robin balancer: each host's
 * consecutive polls and replies reach different processes.
 */
import { useTestReplicas } from '../support/replicas';
import '../integration/lifecycle.test';

useTestReplicas(2);
