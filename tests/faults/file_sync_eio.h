/* Injected I/O error (files.faults): every fsync of a save's temporary
 * file fails with EIO, as a disk that reports a write error late does;
 * the save must fail naming it, remove the temporary file and keep the
 * destination. */
#define COW__FAULT_ON_file_sync 1
#define COW__FAULT_AT_file_sync(...) (errno = EIO, -1)
