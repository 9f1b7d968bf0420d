/* publisher_ptx.c: prints the runtime's relaunch publisher PTX, for the lit test that assembles and checks it.
 * The publisher keeps stream order across relaunches without a fence in converted kernels (control_block.h). */
#include <stdio.h>

#include "relaunch_publisher_ptx.h"

int main(void) { return fputs(publisher_ptx, stdout) == EOF; }
