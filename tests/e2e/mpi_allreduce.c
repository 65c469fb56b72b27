/* mpi_allreduce.c - e2e MPI program: one MPI_Allreduce, checked.
 * Every rank contributes rank+1; the sum must be W*(W+1)/2. Each rank prints
 *   MPIALLREDUCE rank=R world=W host=H sum=S OK|BAD
 * with H its hostname (the pod's). Exit 1 on a wrong sum. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int rank = 0;
	int world = 0;
	long mine = 0;
	long sum = 0;
	long want = 0;
	char host[256] = "";

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &world);
	if (gethostname(host, sizeof(host) - 1) != 0)
		host[0] = '\0';
	mine = rank + 1;
	MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	want = (long)world * (world + 1) / 2;
	printf("MPIALLREDUCE rank=%d world=%d host=%s sum=%ld %s\n", rank, world, host, sum,
	       sum == want ? "OK" : "BAD");
	fflush(stdout);
	MPI_Finalize();
	return sum == want ? 0 : 1;
}
