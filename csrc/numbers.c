/* Number parsing and formatting that must match Redis byte for byte.
 *
 * Redis parses floats with strtod/strtold and prints them with "%.17g" and "%.17Lf"; those
 * are libc behaviours (hex floats, "infinity", 80-bit long double arithmetic on x86) that
 * Rust's own float code does not reproduce, so we call the same libc routines. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NUM_CHARS 5120

/* Redis's string2d: 1 and *out on success, 0 when not a valid double. */
int vm_string2d(const char *s, size_t len, double *out) {
    char buf[MAX_NUM_CHARS];
    char *eptr;
    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    double v = strtod(buf, &eptr);
    /* Consuming fewer than len bytes means an embedded NUL: not a number. */
    if (isspace((unsigned char)buf[0]) || eptr[0] != '\0' || (size_t)(eptr - buf) != len ||
        (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || fpclassify(v) == FP_ZERO)) ||
        isnan(v))
        return 0;
    *out = v;
    return 1;
}

static int string2ld(const char *s, size_t len, long double *out) {
    char buf[MAX_NUM_CHARS];
    char *eptr;
    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    long double v = strtold(buf, &eptr);
    if (isspace((unsigned char)buf[0]) || eptr[0] != '\0' || (size_t)(eptr - buf) != len ||
        (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || fpclassify(v) == FP_ZERO)) ||
        isnan(v))
        return 0;
    *out = v;
    return 1;
}

/* Redis's ld2string in human mode: "%.17Lf" with trailing zeros removed. */
static int ld2string_human(char *buf, size_t len, long double value) {
    int l;
    if (isinf(value)) {
        if (len < 5) return 0;
        if (value > 0) { memcpy(buf, "inf", 3); l = 3; }
        else { memcpy(buf, "-inf", 4); l = 4; }
        return l;
    }
    l = snprintf(buf, len, "%.17Lf", value);
    if (l < 0 || (size_t)l + 1 > len) return 0;
    if (strchr(buf, '.') != NULL) {
        char *p = buf + l - 1;
        while (*p == '0') { p--; l--; }
        if (*p == '.') l--;
    }
    if (l == 2 && buf[0] == '-' && buf[1] == '0') { buf[0] = '0'; l = 1; }
    return l;
}

/* INCRBYFLOAT: base (or NULL for an integer base given in base_int) plus incr.
 * Returns the length written to out, -1 if base is not a float, -2 if incr is not,
 * -3 if the result is NaN or infinite, -4 if out is too small. */
int vm_incrbyfloat(const char *base, size_t base_len, long long base_int, int base_is_int,
                   const char *incr, size_t incr_len, char *out, size_t out_len) {
    long double value, delta;
    if (base_is_int) value = (long double)base_int;
    else if (!string2ld(base, base_len, &value)) return -1;
    if (!string2ld(incr, incr_len, &delta)) return -2;
    value += delta;
    if (isnan(value) || isinf(value)) return -3;
    int l = ld2string_human(out, out_len, value);
    if (l == 0) return -4;
    return l;
}

/* "%.17g", as Redis formats doubles in replies. */
int vm_fmt_g17(double d, char *out, size_t out_len) {
    return snprintf(out, out_len, "%.17g", d);
}

/* strtod on the start of s[0..len) (no leading whitespace expected): the number of bytes it
 * used (0: no number) and the value. The bytes are copied, NUL-terminated, as strtod needs. */
size_t vm_strtod_prefix(const char *s, size_t len, double *out) {
    char stack[512];
    char *buf = len < sizeof(stack) ? stack : malloc(len + 1);
    char *eptr;
    if (buf == NULL) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    *out = strtod(buf, &eptr);
    size_t used = (size_t)(eptr - buf);
    if (buf != stack) free(buf);
    return used;
}

/* "%.*g" with the given precision. */
int vm_fmt_g(double d, int precision, char *out, size_t out_len) {
    return snprintf(out, out_len, "%.*g", precision, d);
}
