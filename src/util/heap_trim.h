// Returning the malloc heaps' free pages to the operating system after a slide closes.
//
// Many threads opening, reading and closing slides leave freed blocks in glibc's per-thread arenas (up to
// 8 per core), which keep them: the resident set grows with nothing leaked (bench/RESULTS.md, "heap trims
// on close"). A close is where a slide's structures and buffers have just been freed, so it trims the
// heaps there - at most once a second, so a program that opens and closes thousands of slides pays for
// one trim a second, and none on its reads.
#pragma once

namespace tilewise::internal {

// malloc_trim(0) where the C library has it (glibc), unless the last one ran under a second ago; thread-safe.
void trim_heap_after_close();

}  // namespace tilewise::internal
