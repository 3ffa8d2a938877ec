/*
 * zydis_profile.c - the run scripts/setup trains Zydis's profile-guided
 * build on: every instruction of the executable sections of the ELF files
 * named, decoded with all its operands, as the code walk and the frame
 * evaluator decode them (patcher/arch/x86_64/zydis.h).
 *
 *     zydis_profile FILE...
 *
 * Prints how many instructions it decoded; exits 1 when a file cannot be
 * read as a 64-bit ELF file, or when no instruction decoded at all (a file
 * whose section count is in its first section header, SHN_XINDEX, gives
 * none).
 */
#include <Zydis/Zydis.h>

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t decode_all(const ZydisDecoder *dec, const uint8_t *code, size_t size)
{
	ZydisDecoderContext ctx;
	ZydisDecodedInstruction in;
	ZydisDecodedOperand op[ZYDIS_MAX_OPERAND_COUNT];
	size_t pos = 0, n = 0;

	while (pos < size) {
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(dec, &ctx, code + pos, size - pos, &in))) {
			pos++;
			continue;
		}
		if (ZYAN_SUCCESS(ZydisDecoderDecodeOperands(dec, &ctx, &in, op, in.operand_count)))
			n++;
		pos += in.length;
	}
	return n;
}

/* The instructions of one mapped file's executable sections; -1: not a
 * 64-bit ELF file whose section headers lie inside it. */
static long decode_file(const ZydisDecoder *dec, const uint8_t *d, size_t size)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)d;
	const Elf64_Shdr *sh;
	size_t i, n = 0;

	if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shentsize != sizeof(*sh) || eh->e_shoff > size || eh->e_shoff % _Alignof(Elf64_Shdr) ||
	    (size - eh->e_shoff) / sizeof(*sh) < eh->e_shnum)
		return -1;
	sh = (const Elf64_Shdr *)(d + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == SHT_PROGBITS && (sh[i].sh_flags & SHF_EXECINSTR) && sh[i].sh_offset <= size &&
		    sh[i].sh_size <= size - sh[i].sh_offset)
			n += decode_all(dec, d + sh[i].sh_offset, sh[i].sh_size);
	return (long)n;
}

int main(int argc, char **argv)
{
	ZydisDecoder dec;
	long total = 0;
	int i;

	if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return 1;
	for (i = 1; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY);
		struct stat sb;
		void *d;
		long n;

		if (fd < 0 || fstat(fd, &sb) || !sb.st_size ||
		    (d = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
			fprintf(stderr, "zydis_profile: %s: cannot read\n", argv[i]);
			if (fd >= 0)
				close(fd);
			return 1;
		}
		close(fd);
		n = decode_file(&dec, d, (size_t)sb.st_size);
		munmap(d, (size_t)sb.st_size);
		if (n < 0) {
			fprintf(stderr, "zydis_profile: %s: not a 64-bit ELF file\n", argv[i]);
			return 1;
		}
		total += n;
	}
	printf("zydis_profile: %ld instructions\n", total);
	return total > 0 ? 0 : 1;
}
