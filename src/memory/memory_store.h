/* memory_store.h - one copy on disk of each count memory that several runs
 * built: a content-addressed folder (tempo train's default is
 * DATA_DIR/memory-store) holds IDENTITY.bin, named by the hex sha256 that
 * memory_file_identity gives, and each run's RUN_DIR/memory.bin becomes a
 * hard link to it. A default run's memory is 5.45 GB, and runs of one data
 * and one setting make the same memory, so ten such runs now hold one copy.
 *
 * Every run still builds and times its own memory inside its budget; the
 * store only trades its bytes on disk for a link afterwards, and a run
 * whose memory the store holds already links it without writing its own
 * (memory_store_link_existing: 5.47 GB less written beside the training). A run's file is
 * only ever replaced by an atomic rename of a link to a copy of the same
 * identity whose every byte matches its checksum (memory_file_verify; read
 * again unless IDENTITY.verified, written when it was last read whole or
 * written, still holds its inode, size and modification time), so the
 * run's memory.bin is whole at every instant. Deleting a run folder
 * leaves the others' links intact (the bytes go when the last link does);
 * a store entry no run links any more (link count 1) is removed by the next
 * share. The shared file is made read-only: every link would see an edit
 * in place (tempo itself only ever replaces files by a rename). Hard links need the store and the run folder on one file system:
 * elsewhere the run keeps its own copy, with a reason. */
#ifndef TEMPO_MEMORY_STORE_H
#define TEMPO_MEMORY_STORE_H

#include <stdint.h>

#include "core/error.h"

typedef struct {
    char entry[1200];      /* the store's file for this memory */
    int reused;            /* 1: the store held this memory already; the run's own copy was dropped */
    int replaced_bad;      /* 1: the store's copy failed its check and was replaced by the run's */
    int found_bad;         /* memory_store_link_existing: 1 when the store's copy failed its check */
    uint64_t bytes;        /* the memory file's size */
    int pruned;            /* store entries no run linked, removed */
} memory_store_result;

/* Make run_file (a count memory just written, e.g. RUN_DIR/memory.bin) a
 * hard link to the store's copy of it in store_dir (created if missing),
 * adding the run's file as that copy when the store has none or a damaged
 * one (known_bad: memory_store_link_existing found it damaged a moment ago,
 * so its gigabytes are not read again); then remove the entries no run
 * links. 0, or -1 with err saying why the run keeps its own copy (the run's
 * file is then untouched and still valid). */
int memory_store_share(const char *store_dir, const char *run_file, int known_bad, memory_store_result *r,
                       tempo_error *err);

/* Before a run writes its memory (of identity id: memory_header_identity):
 * when store_dir holds a valid copy of it (its stamp matches, or every byte
 * is read and checked), make run_file a link to it at once, so the run
 * never writes its gigabytes beside its training, and remove the entries
 * no run links. 1 when linked (r->reused), 0 when the store holds no valid
 * copy (r->found_bad when it holds a damaged one; the run writes run_file
 * and calls memory_store_share, passing found_bad on), -1 with err
 * when the link failed (run_file is untouched). */
int memory_store_link_existing(const char *store_dir, const uint8_t id[32], const char *run_file,
                               memory_store_result *r, tempo_error *err);

/* Remove the store's entries that no run links (link count 1) and the
 * temporaries of dead processes; how many entries were removed (0 when the
 * folder cannot be read). */
int memory_store_prune(const char *store_dir);

#endif
