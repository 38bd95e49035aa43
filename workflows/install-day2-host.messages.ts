/**
 * Messages of installDay2HostWorkflow. The API imports only this file.
 * Signals are facts in the past tense; updates are commands; queries start with get.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { InstallTimeouts } from './install-cluster.messages';

export interface Day2InstallInput {
  clusterId: string;
  infraEnvId: string;
  hostId: string;
  /** Which install of this host (a reset and a new install is the next attempt). */
  attempt: number;
  timeouts?: Partial<InstallTimeouts>;
}

/** Sent by the API once per status or stage change of the host (its installer's or the controller's report). */
export interface Day2HostReport {
  hostId: string;
  status: string;
  stage?: string;
  info?: string;
}

export const day2HostReported = defineSignal<[Day2HostReport]>('day2HostReported');
/** The user reset the host (it must boot the discovery image again): this install is over. */
export const day2HostReset = defineSignal('day2HostReset');

/** Retries the failed host in place, with a freshly minted join credential. */
export const retryDay2Host = defineUpdate<{ hostId: string; retry: number }, [{ hostId: string }]>('retryDay2Host');

export interface Day2Progress {
  phase: 'installing' | 'error' | 'installed' | 'reset';
  hostId: string;
  status: string;
  stage?: string;
  retries: number;
  waitingFor: string;
  /** When the host's current join credential stops working. */
  credentialExpiresAt?: string;
  error?: string;
}
export const getDay2HostProgress = defineQuery<Day2Progress>('getDay2HostProgress');
