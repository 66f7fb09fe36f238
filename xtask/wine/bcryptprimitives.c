// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * A stand-in for bcryptprimitives.dll, for Wine releases that lack it (Wine 8.0,
 * Debian 12's): Rust's std for Windows (1.78 and later) imports ProcessPrng from
 * it to seed its hash maps, and a test binary without it does not even start.
 * `cargo xtask wine-test` builds this with MinGW and puts it in the Wine prefix
 * only when the prefix has no bcryptprimitives.dll of its own.
 *
 * ProcessPrng fills the buffer with random bytes and cannot fail on Windows; here
 * it draws them from RtlGenRandom (advapi32's SystemFunction036), which Wine 8
 * implements, in chunks that fit its ULONG length.
 */
#include <windows.h>

#define CHUNK_BYTES 0x40000000UL

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG chunk = len > CHUNK_BYTES ? CHUNK_BYTES : (ULONG)len;

		if (!SystemFunction036(data, chunk))
			return FALSE;
		data += chunk;
		len -= chunk;
	}
	return TRUE;
}
