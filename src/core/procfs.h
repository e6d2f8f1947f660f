/* procfs.h - reading a number from a Linux /proc file (a "Name:  123 kB"
 * line), for the figures tempo reports about its own process and the
 * machine (peak RSS, available memory). Nothing else lives here. */
#ifndef TEMPO_PROCFS_H
#define TEMPO_PROCFS_H

/* The value of the "field: N kB" line of path, in kB; 0 when the file or
 * the line is missing (e.g. procfs_kb("/proc/meminfo", "MemAvailable")). */
double procfs_kb(const char *path, const char *field);

#endif
