// autosave.js — how often the web app's Worker writes its autosave while a
// run trains (worker.js decides when, this file how often): at most every
// AUTOSAVE_MIN_S seconds of wall time, and no more often than
// AUTOSAVE_BYTES_PER_S allows for the checkpoint's size (a 287 MB checkpoint:
// about every five minutes), so a large model does not spend its time
// writing. A pause, a stop and the end of a run always write.
export const AUTOSAVE_MIN_S = 10;
export const AUTOSAVE_BYTES_PER_S = 1 << 20;

// Seconds between two autosaves of a checkpoint of `bytes` while training.
export function autosaveInterval(bytes) {
  return Math.max(AUTOSAVE_MIN_S, bytes / AUTOSAVE_BYTES_PER_S);
}
