/* Preloaded by scripts/sanitize.sh: dlclose does nothing, so the plugins Open MPI
 * unloads at MPI_Finalize stay mapped and LeakSanitizer can name them in a stack
 * (a closed module prints as "<unknown module>", which no suppression matches). */
int dlclose(void *handle) {
  (void)handle;
  return 0;
}
