/* What the HDF5 writer (h5.c) and reader (h5read.c) share. */
#ifndef SIM_IO_H5_INTERNAL_H
#define SIM_IO_H5_INTERNAL_H

#include <stddef.h>

/* The innermost message of HDF5's current error stack, reduced to the system's message when
 * there is one (HDF5's descriptions of failed system calls carry "error message = '...'"
 * among other fields); "HDF5 error" when the stack is empty. */
void io__h5_reason(char *buf, size_t n);

#endif
