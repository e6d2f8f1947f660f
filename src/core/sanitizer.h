/* sanitizer.h - whether this translation unit is built with AddressSanitizer
 * (gcc's -fsanitize=address defines __SANITIZE_ADDRESS__, clang answers
 * __has_feature): TEMPO_ASAN is 1 then, and ASan's interface (poisoning
 * memory by hand) is included. For the code that marks memory out of bounds
 * itself (the GPU emulator's shared and device memory) and the tests that
 * check it. Header-only. */
#ifndef TEMPO_SANITIZER_H
#define TEMPO_SANITIZER_H

#if defined(__SANITIZE_ADDRESS__)
#define TEMPO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEMPO_ASAN 1
#endif
#endif

#ifdef TEMPO_ASAN
#include <sanitizer/asan_interface.h>
#endif

#endif
