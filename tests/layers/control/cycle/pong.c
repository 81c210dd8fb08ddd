/* pong.c - the other half of the layers.control.cycle fixture (ping.c). */
int cow_layers_ping(int n);

int
cow_layers_pong(int n)
{
	return n <= 0 ? 1 : cow_layers_ping(n - 1);
}
