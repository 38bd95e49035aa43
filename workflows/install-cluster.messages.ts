/**
 * Messages of installClusterWorkflow. The API imports only this file.
 * Signals are facts in the past tense; updates are commands; queries start with get.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';

export interface InstallInput {
  clusterId: string;
  attempt: number;
  clusterName: string;
  release: string;
  timeouts?: Partial<InstallTimeouts>;
  /**
   * Continue as new once the history has this many events, besides whenever the server suggests
   * it. Absent: only the suggestion (about 4k events), which tests cannot reach quickly and which
   * Temporal's time-skipping test server never makes.
   */
  continueAsNewAfterEvents?: number;
}

export interface InstallTimeouts {
  /** All hosts must pass the pre-install checks within this (AS: 10 min for the cluster). */
  preparingMs: number;
  /** A stage older than this gets a warning event; the install keeps waiting. */
  stageSoftMs: number;
  /** A stage older than this fails the host. */
  stageHardMs: number;
  /** Finalizing must complete within this. */
  finalizingMs: number;
}

export const DEFAULT_TIMEOUTS: InstallTimeouts = { preparingMs: 10 * 60_000, stageSoftMs: 30 * 60_000, stageHardMs: 90 * 60_000, finalizingMs: 5 * 3600_000 };

/** Sent by the API once per host status or stage change (never once per poll). */
export interface HostReport {
  hostId: string;
  status: string;
  stage?: string;
  info?: string;
}

export const hostInstallReported = defineSignal<[HostReport]>('hostInstallReported');
/** The in-cluster side (the controller) reported the cluster components available. */
export const clusterComponentsReported = defineSignal<[{ available: boolean; detail?: string }]>('clusterComponentsReported');
export const installCancelled = defineSignal('installCancelled');
export const installReset = defineSignal('installReset');

export interface RetryHostResult {
  hostId: string;
  retry: number;
}
/** Retries one failed host in place, without resetting the cluster. */
export const retryHost = defineUpdate<RetryHostResult, [{ hostId: string }]>('retryHost');

export interface InstallProgress {
  phase: 'preparing' | 'installing' | 'finalizing' | 'installed' | 'error' | 'cancelled' | 'reset' | 'preparation-failed';
  bootstrapHostId?: string;
  waitingFor: string;
  hosts: Array<{ hostId: string; role: string; status: string; stage?: string; stageSince?: number; retries: number }>;
  error?: string;
}
export const getInstallProgress = defineQuery<InstallProgress>('getInstallProgress');
